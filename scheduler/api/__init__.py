"""Kueue API models (kueue.x-k8s.io/v1beta2, reading v1beta1 too) and YAML loading."""
