"""The controllers that admit TrainJobs on a cluster and launch them.

They sit on the Kubernetes adapter (``scheduler.kube``): informers fill a cache of the API
server's truth, a work queue with per-key backoff drives level-triggered reconcilers, and every
admission decision is asked of the pure engine (``scheduler.engine``) and written back in
Kueue's own shapes. The engine never imports this package.
"""
