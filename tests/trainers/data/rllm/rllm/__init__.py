"""rLLM's data types, vendored for orchviz's trainers' suite (see ../README.md).

Upstream's package __init__ configures logging from rllm.utils; nothing of it is needed to
read an Episode, so this one is empty."""
