"""What a profile is and does, target by target alike: ranks, workloads, the nsys command,
the plan (window, size, overhead, teardown), recipes, the training script's step window and
the lints over all of it."""
