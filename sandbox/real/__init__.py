"""The real Kubernetes components, built from their Go modules and run as processes on loopback."""
