"""How each real component is started: its command line (and configuration file) on loopback.

Pure functions of where things are (binaries, credentials, ports, the working folder): the
flags follow what kubeadm and kwokctl's binary runtime pass, trimmed to one machine (no cloud,
no node IPAM, a throwaway etcd without fsync).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from simulations.kwok import KWOK_NODE_ANNOTATION

# KWOK's own convention (kwokctl's configuration uses it): a node annotated so keeps the status
# someone else writes (a test reporting it NotReady as a kubelet would), KWOK's stages leave it.
KWOK_CUSTOM_STATUS_ANNOTATION = ("kwok.x-k8s.io/status", "custom")

# Every request by a service account, at Metadata level: who did which verb on what.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "Metadata", "users": ["kueue-controller"]},  # Kueue's writes, for bench admission --real
        {"level": "None"},
    ],
}
# kube-controller-manager's controllers a machine of processes has no use for.
UNUSED_CONTROLLERS = ("nodeipam", "service-lb-controller", "route", "cloud-node-lifecycle", "persistentvolume-binder")


def etcd(binary: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [
        str(binary),
        "--name=trainyard",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=trainyard={peer}",
        "--unsafe-no-fsync",  # a throwaway test cluster: speed over durability
        "--log-level=warn",
    ]


def kube_apiserver(
    binary: Path, pki: Callable[[str], str], etcd_url: str, port: int, cert_dir: Path, audit: tuple[Path, Path] | None
) -> list[str]:
    """``audit``: (policy file, log file), or None for no audit log."""
    command = [
        str(binary),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
        f"--tls-cert-file={pki('apiserver.crt')}",
        f"--tls-private-key-file={pki('apiserver.key')}",
        f"--client-ca-file={pki('ca.crt')}",
        f"--token-auth-file={pki('tokens.csv')}",
        f"--service-account-key-file={pki('sa.pub')}",
        f"--service-account-signing-key-file={pki('sa.key')}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--authorization-mode=RBAC",
        "--allow-privileged=true",
        "--enable-priority-and-fairness=false",
        f"--requestheader-client-ca-file={pki('front-proxy-ca.crt')}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki('front-proxy-client.crt')}",
        f"--proxy-client-key-file={pki('front-proxy-client.key')}",
        "--enable-aggregator-routing=true",
        "--profiling=false",
    ]
    if audit is not None:
        policy, log = audit
        command += [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={log}",
            "--audit-log-format=json",
            "--audit-log-mode=batch",  # written behind the requests, not in their path
            # batch mode drops events once its buffer (10,000 by default) is full: at 15,000 Workloads
            # `bench admission --real` read 0.32 status writes per admitted Workload
            "--audit-log-batch-buffer-size=500000",
            # the log is rotated at 100 MB unless told otherwise (lumberjack's default for 0), and a
            # 15,000-Workload run writes more: the counts then missed the rotated part
            "--audit-log-maxsize=1000000",
        ]
    return command


def _serving(kubeconfig: Path, port: int) -> list[str]:
    """A component's own HTTPS endpoint (/healthz) on loopback, delegating authn/z to the API server."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
    ]


def kube_controller_manager(
    binary: Path, kubeconfig: Path, pki: Callable[[str], str], port: int, node_grace_seconds: int
) -> list[str]:
    return [
        str(binary),
        *_serving(kubeconfig, port),
        f"--service-account-private-key-file={pki('sa.key')}",
        f"--root-ca-file={pki('ca.crt')}",
        "--use-service-account-credentials=true",  # each controller as its own account, as kubeadm runs it
        f"--node-monitor-grace-period={node_grace_seconds}s",
        "--node-monitor-period=1s",
        "--controllers=*," + ",".join(f"-{c}" for c in UNUSED_CONTROLLERS),
    ]


def kube_scheduler(binary: Path, kubeconfig: Path, port: int) -> list[str]:
    return [str(binary), *_serving(kubeconfig, port)]


def kwok(binary: Path, kubeconfig: Path, port: int, node_grace_seconds: int) -> list[str]:
    """KWOK manages the annotated Nodes and their Pods by the Stage objects in the cluster.

    KWOK renews each node's Lease every quarter of the lease's duration; the duration is chosen so
    that three renewals fit in kube-controller-manager's grace period, as a kubelet's 10 s renewals
    do in the default 50 s (one renewal per grace period marked healthy nodes NotReady whenever a
    loaded machine delayed it)."""
    lease_seconds = max(4, (4 * node_grace_seconds) // 3)
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
        "--disregard-status-with-annotation-selector={}={}".format(*KWOK_CUSTOM_STATUS_ANNOTATION),
        "--enable-crds=Stage",
        f"--server-address=127.0.0.1:{port}",
        "--node-ip=10.0.0.1",
        "--cidr=10.244.0.0/16",
        f"--node-lease-duration-seconds={lease_seconds}",
    ]


def controller_runtime_config(
    api_version: str, webhook_port: int, health_port: int, cert_dir: Path, **extra: Any
) -> dict[str, Any]:
    """A controller-runtime manager's configuration file (JobSet's, Kueue's) for loopback.

    Its own certificate management is off: the cluster CA's certificate for 127.0.0.1 is in
    ``cert_dir``, and its webhook configurations are registered with that CA.
    """
    return {
        "apiVersion": api_version,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "clientConnection": {"qps": 500, "burst": 500},
        **extra,
    }


def controller_runtime_manager(binary: Path, kubeconfig: Path, config_file: Path) -> list[str]:
    """JobSet's or Kueue's manager, from its configuration file."""
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--config={config_file}", "--zap-log-level=info"]
