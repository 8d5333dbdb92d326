"""The sandbox cluster: a Kubernetes API server and the controllers a cluster would run, in one process.

It grows here: ``apiserver`` is a fake Kubernetes API server speaking the real protocol over HTTP
on loopback; ``standins`` holds small stand-ins for the JobSet and Job controllers, kube-scheduler
(a binder) and the kubelet (a pod runner), each working over HTTP against any API server.
"""
