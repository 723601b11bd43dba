"""Excerpt of rllm/workflows (see ../../README.md)."""
