"""The admission webhook service: aiohttp over HTTPS, AdmissionReview handling, TLS, health, metrics.

Owns: the HTTPS server, AdmissionReview decoding and answering (validate and mutate TrainJobs and
Kueue objects), certificates, health and metrics endpoints, and the visibility API for pending work.

Never: makes an admission or quota decision itself (it asks ``scheduler.engine`` and the checks in
``scheduler.api``), imports ``simulations`` or the ``trainyard`` CLI, or imports torch.
"""
