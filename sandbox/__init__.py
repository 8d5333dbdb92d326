"""Local clusters for trying and testing the service: embedded (nothing to build) and real.

``apiserver`` is trainyard's embedded Kubernetes API server: the real protocol on loopback
(HTTP, or HTTPS with a generated CA; a bearer token), calling admission webhooks as
kube-apiserver does. ``standins`` holds small stand-ins for the JobSet and Job controllers,
kube-scheduler (a binder), the kubelet (a pod runner) and KWOK (``kwok_stages``: Node
heartbeats and Pod phases from KWOK's Stages), each working over HTTP against any API server.
``scenario_objects`` builds what a sandbox is seeded with from the simulations scenario
catalogue; ``embedded`` puts the embedded cluster together with trainyard's webhook
(``service_webhook``) and controllers (``trainyard sandbox up``); ``real`` runs the real
components (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, JobSet) built
from their Go modules (``trainyard sandbox up --real``); ``compare`` holds a sandbox run beside
the embedded simulator, decision by decision.

Nothing below this package imports it: the simulator, the engine and the webhook never need a
cluster of their own.
"""
