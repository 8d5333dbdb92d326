"""The scheduler: Kueue object models, the pure admission engine, topology placement, controllers."""
