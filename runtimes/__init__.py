"""TrainJob runtimes: Kubernetes core and Trainer models, the plugin pipeline, the local launcher, the SDK.

This is the bottom layer of trainyard: it imports no other trainyard package.
"""
