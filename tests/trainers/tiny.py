"""A tokenizer and tiny models made here, so the trainers run with nothing from a hub: a
byte-level BPE trained on the exported text, and Llama configs a few thousand parameters wide.

The chat template is strict as the common ones are (Llama 2's and Mistral's raise when roles do
not alternate user/assistant after an optional system turn), so a conversation a strict template
refuses fails here too."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

STRICT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{{ '<s>[SYS]' + messages[0]['content'] + '[/SYS]' }}"
    "{% else %}{% set loop_messages = messages %}{{ '<s>' }}{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST]' + message['content'] + '[/INST]' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '</s>' }}{% endgeneration %}"
    "{% else %}{{ raise_exception('Only system, user and assistant roles are supported') }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '' }}{% endif %}"
)
"""Mistral-style: system first or not at all, then user and assistant in turn."""

PLACEHOLDER = "ки"
"""OpenRLHF's step placeholder (examples/scripts/train_prm_mistral.sh): one token in Mistral's
vocabulary, so one here too."""

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>", "[INST]", "[/INST]", "[SYS]", "[/SYS]", PLACEHOLDER]


@dataclass
class Tiny:
    """Where the tokenizer is saved; models are made fresh for each test."""

    folder: Path

    def tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.folder)

    def config(self, **extra):
        from transformers import LlamaConfig

        tok = self.tokenizer()
        return LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                           num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                           max_position_embeddings=32768, pad_token_id=tok.pad_token_id,
                           bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                           **extra)

    def causal_lm(self):
        """A one-layer Llama for DPO and KTO (and their reference copies)."""
        import torch
        from transformers import LlamaForCausalLM

        torch.manual_seed(0)
        return LlamaForCausalLM(self.config())

    def reward_model(self):
        """The same with a one-output score head, as TRL's RewardTrainer and OpenRLHF's reward
        model use."""
        import torch
        from transformers import LlamaForSequenceClassification

        torch.manual_seed(0)
        return LlamaForSequenceClassification(self.config(num_labels=1))


    def token_classifier(self):
        """The same with a two-class head on every token, as TRL's PRMTrainer trains."""
        import torch
        from transformers import LlamaForTokenClassification

        torch.manual_seed(0)
        return LlamaForTokenClassification(self.config(num_labels=2))


def build_tiny(texts: Iterable[str], folder: Path) -> Tiny:
    """Train a byte-level BPE (2,000 tokens) on `texts` and save it as a transformers tokenizer
    with the strict chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>",
                                  chat_template=STRICT_TEMPLATE, model_max_length=32768)
    tok.save_pretrained(folder)
    return Tiny(folder)
