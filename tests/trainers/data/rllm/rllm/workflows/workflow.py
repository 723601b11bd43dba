"""Excerpt of rllm-org/rllm 9beb6e0 rllm/workflows/workflow.py: the TerminationReason enum,
verbatim (Episode.from_dict imports it from here). The rest of the module (Workflow, its
engines and environments) is left out: it needs the whole training stack."""

from enum import Enum


class TerminationReason(Enum):
    MAX_PROMPT_LENGTH_EXCEEDED = "max_prompt_length_exceeded"
    MAX_RESPONSE_LENGTH_EXCEEDED = "max_response_length_exceeded"
    ENV_DONE = "env_done"
    MAX_TURNS_EXCEEDED = "max_turns_exceeded"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"
    ERROR = "error"
