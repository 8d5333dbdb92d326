// trainyard dashboard: live pages, in-place navigation and log following. No library, no build step.
(function () {
  "use strict";
  const content = () => document.getElementById("content");

  async function swap(href, push) {
    const response = await fetch(href, { headers: { "X-Fragment": "content" } });
    const text = await response.text();
    const version = response.headers.get("X-Data-Version");
    if (version) document.body.dataset.version = version;
    if (!response.ok && response.status !== 404) {
      document.body.dataset.error = String(response.status);
      return;
    }
    // charts keep their drawing while the new data loads: no blank flash on every refresh
    const drawn = new Map();
    for (const old of content().querySelectorAll("[data-charts]")) drawn.set(old.dataset.charts, [...old.childNodes]);
    content().innerHTML = text;
    for (const fresh of content().querySelectorAll("[data-charts]")) {
      if (drawn.has(fresh.dataset.charts)) fresh.append(...drawn.get(fresh.dataset.charts));
    }
    if (push) history.pushState(null, "", href);
    wire();
    document.body.dataset.swaps = String(Number(document.body.dataset.swaps || 0) + 1);
  }

  function editing() {
    const active = document.activeElement;
    return active && content().contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }

  function wire() {
    for (const a of content().querySelectorAll("a[data-fragment]")) {
      a.addEventListener("click", (event) => {
        if (event.ctrlKey || event.metaKey || event.shiftKey) return;
        event.preventDefault();
        swap(a.href, true);
      });
    }
    for (const form of content().querySelectorAll("form[data-fragment]")) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const query = new URLSearchParams(new FormData(form));
        swap(form.action.split("?")[0] + "?" + query.toString(), true);
      });
      for (const select of form.querySelectorAll("[data-autosubmit]")) {
        select.addEventListener("change", () => form.requestSubmit());
      }
    }
    if (window.trainyardCharts) window.trainyardCharts.drawAll(content());
  }

  function live() {
    if (!document.body.dataset.live) return;
    const indicator = document.getElementById("live");
    const source = new EventSource("/events");
    let pending = null;
    source.addEventListener("open", () => indicator && indicator.classList.add("on"));
    source.addEventListener("error", () => indicator && indicator.classList.remove("on"));
    const refresh = (event) => {
      if (event.data === document.body.dataset.version || pending) return;
      pending = setTimeout(async () => {
        pending = null;
        if (editing()) return; // a half-typed filter is not thrown away
        await swap(location.href, false);
      }, 250);
    };
    // "hello" carries the version when the feed opened: changes made while the page was on its
    // way to the browser show at once
    source.addEventListener("hello", refresh);
    source.addEventListener("change", refresh);
  }

  function follow() {
    for (const pre of document.querySelectorAll("pre[data-stream]")) {
      const stream = new EventSource(pre.dataset.stream);
      stream.onmessage = (event) => {
        const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(event.data + "\n");
        if (atBottom) pre.scrollTop = pre.scrollHeight;
      };
      for (const kind of ["failed", "ended"]) {
        stream.addEventListener(kind, (event) => {
          const note = document.createElement("span");
          note.className = "log-" + kind;
          note.textContent = "[" + event.data + "]\n";
          pre.append(note);
          stream.close();
        });
      }
    }
  }

  window.addEventListener("popstate", () => swap(location.href, false));
  wire();
  live();
  follow();
})();
