"""orchviz's version, in a module of its own: the CLI, the store (which writes it beside a
schema) and a trained model's card read it without importing the package's face."""

__version__ = "0.1.0"
