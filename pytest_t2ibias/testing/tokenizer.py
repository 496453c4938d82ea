"""A word-level tokenizer built locally, so tiny and toy models need no hub download."""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


def build_word_tokenizer(words: Iterable[str], model_max_length: int = 32) -> PreTrainedTokenizerFast:
    """Lower-cased, whitespace/punctuation split, one id per known word.

    Every encoding is wrapped in ``<bos> ... <eos>`` like CLIP's tokenizer, so it can stand in
    for ``CLIPTokenizer`` in a ``StableDiffusionPipeline`` and for a causal LM's tokenizer.
    """
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for word in sorted({w.lower() for w in words}):
        vocab.setdefault(word, len(vocab))
    return _word_tokenizer(vocab, model_max_length)


def extend_word_tokenizer(tokenizer: PreTrainedTokenizerFast, words: Iterable[str]) -> PreTrainedTokenizerFast:
    """``tokenizer`` with the ``words`` it lacks appended (sorted) after its last id.

    Every old word keeps its id, so a trained text encoder stays valid once its embedding
    table is resized to ``len(result)`` (``build_word_tokenizer`` sorts all words, which
    would renumber them).
    """
    vocab = dict(tokenizer.get_vocab())
    for word in sorted({w.lower() for w in words} - set(vocab)):
        vocab[word] = len(vocab)
    return _word_tokenizer(vocab, tokenizer.model_max_length)


def _word_tokenizer(vocab: dict[str, int], model_max_length: int) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>",
        special_tokens=[("<bos>", vocab["<bos>"]), ("<eos>", vocab["<eos>"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<eos>",
        model_max_length=model_max_length,
    )


def train_text_tokenizer(texts: Iterable[str], vocab_size: int = 768,
                         model_max_length: int = 1024) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``texts``, as GPT-2's is on its corpus.

    Unlike ``build_word_tokenizer`` it keeps case, spacing and punctuation, so a decoded reply
    is the text the model wrote (a JSON list parses); every encoding is wrapped in
    ``<bos> ... <eos>`` with the same special ids, so it stands in where the word tokenizer did.
    """
    from tokenizers import decoders, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    vocab = tokenizer.get_vocab()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>",
        special_tokens=[("<bos>", vocab["<bos>"]), ("<eos>", vocab["<eos>"])],
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>",
                                   bos_token="<bos>", eos_token="<eos>", model_max_length=model_max_length)
