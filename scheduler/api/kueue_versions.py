"""The Kueue API group and the versions trainyard reads: the one spelling every Kueue model module shares."""

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_V1BETA2 = f"{KUEUE_GROUP}/v1beta2"
KUEUE_V1BETA1 = f"{KUEUE_GROUP}/v1beta1"
KUEUE_API_VERSIONS = (KUEUE_V1BETA2, KUEUE_V1BETA1, f"{KUEUE_GROUP}/v1alpha1")
