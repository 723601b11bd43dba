"""Reward labelling: the rubric, the label store and inter-reviewer agreement."""
