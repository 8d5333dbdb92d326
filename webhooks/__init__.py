"""The admission webhook service: aiohttp over HTTPS, AdmissionReview handling, TLS, health, metrics."""
