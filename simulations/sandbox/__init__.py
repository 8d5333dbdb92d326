"""The sandbox cluster: a Kubernetes API server and the controllers a cluster would run, in one process.

``apiserver`` is a Kubernetes API server speaking the real protocol on loopback (HTTP, or HTTPS
with a generated CA; a bearer token), which calls admission webhooks as kube-apiserver does;
``standins`` holds small stand-ins for the JobSet and Job controllers and kube-scheduler (a
binder), each working over HTTP against any API server; ``kwok`` plays KWOK's Stages over the
API (Node heartbeats, Pod phases); ``cluster`` builds what a sandbox is seeded with from the
simulations scenario catalogue. ``trainyard.localcluster.Sandbox`` puts them together with
trainyard's webhook and controllers (``trainyard sandbox up``).
"""
