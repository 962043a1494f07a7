//! The three controllers. Each reconcile is a pipeline: observe → plan (pure) → apply → status.
