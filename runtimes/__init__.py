"""TrainJob runtimes: Kubernetes core and Trainer models, the plugin pipeline, the local launcher, the SDK.

Owns: the TrainJob / TrainingRuntime / ClusterTrainingRuntime / JobSet / PodGroup models, the plugin
pipeline that renders a TrainJob into a JobSet (validate, ML policy, pod-group policy, build),
Training Operator v1 conversion, the local launcher that runs rendered pods as processes, and the
Python SDK.

Never: imports another trainyard package (this is the bottom layer), talks to the admission engine,
or decides admission or placement.
"""
