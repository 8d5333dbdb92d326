"""Local clusters for trying and testing the service: embedded (nothing to build) and real.

``apiserver`` is trainyard's embedded Kubernetes API server: the real protocol on loopback
(HTTP, or HTTPS with a generated CA; a bearer token), calling admission webhooks as
kube-apiserver does. ``standins`` holds small stand-ins for the JobSet and Job controllers,
kube-scheduler (a binder) and the kubelet (a pod runner), each working over HTTP against any
API server; KWOK's part (Node heartbeats and Pod phases from KWOK's Stages) is
``simulations.kwok.stage_controller``, beside the rest of the KWOK code.
``scenario_objects`` builds what a sandbox is seeded with from the simulations scenario
catalogue; ``embedded`` puts the embedded cluster together with trainyard's webhook
(``service_webhook``) and controllers (``trainyard sandbox up``); ``real`` runs the real
components (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, JobSet) built
from their Go modules (``trainyard sandbox up --real``); ``compare`` holds a sandbox run beside
the embedded simulator, decision by decision.

Nothing below this package imports it: the simulator, the engine and the webhook never need a
cluster of their own.
"""
