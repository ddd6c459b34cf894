"""Training drafters for a target: distillation data from the target's own generations, the
KL(p_target ‖ p_draft) + λ·CE loss, the training loop and the held-out acceptance evaluation."""
