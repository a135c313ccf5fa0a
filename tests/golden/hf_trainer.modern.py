"""Tiny BERT text classifier fine-tuned with the Hugging Face Trainer.

Everything is built in code: a synthetic sentiment-like corpus, a word-level tokenizer made
from it, and a randomly initialised 2-layer BERT, so the script needs no network access.
"""

import argparse
import os
import random
import tempfile

# The model and tokenizer are made locally; never let a stray lookup reach the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    BertConfig,
    BertForSequenceClassification,
    PreTrainedTokenizerFast,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

POSITIVE = ["good", "great", "fine", "nice", "happy", "excellent", "lovely", "bright"]
NEGATIVE = ["bad", "awful", "poor", "sad", "terrible", "ugly", "dull", "broken"]
FILLER = ["the", "movie", "was", "really", "quite", "a", "plot", "and", "very", "story"]


def make_corpus(n: int, seed: int = 0) -> tuple[list[str], list[int]]:
    # Sentences of varying length, so the padding strategy decides the tensor shapes.
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        label = rng.randrange(2)
        words = rng.choices(FILLER, k=rng.randint(3, 10))
        cue = POSITIVE if label else NEGATIVE
        for _ in range(rng.randint(1, 2)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(cue))
        texts.append(" ".join(words))
        labels.append(label)
    return texts, labels


def make_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    words = sorted({w for t in texts for w in t.split()})
    vocab = {tok: i for i, tok in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=32,
    )


class TextDataset(torch.utils.data.Dataset):
    def __init__(self, encodings, labels):
        self.encodings = encodings
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        item = {k: torch.tensor(v[idx]) for k, v in self.encodings.items()}
        item["labels"] = torch.tensor(self.labels[idx])
        return item


class PrintLossCallback(TrainerCallback):
    # The Trainer's own progress output is not parseable; the tests read these lines instead.
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs and state.is_world_process_zero:
            print(f"step={state.global_step} loss={logs['loss']:.6f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--output-dir", default=os.path.join(tempfile.gettempdir(), "hf_trainer"))
    args, _ = parser.parse_known_args()

    texts, labels = make_corpus(256)
    tokenizer = make_tokenizer(texts)
    encodings = tokenizer(texts, padding="longest", truncation=True)
    train_dataset = TextDataset(encodings, labels)

    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        # Dropout draws from the device's RNG, which differs between CPU and XLA; without it
        # the CPU run and the converted XLA run of this script give comparable losses.
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=2,
        pad_token_id=tokenizer.pad_token_id,
    )
    # Seeded before the model is built: its random initialisation must be the same every run.
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)

    training_args = TrainingArguments(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        optim="adamw_torch_xla",
        dataloader_num_workers=4,
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        callbacks=[PrintLossCallback()],
    )
    trainer.train()


def _mp_fn(index):
    main()


if __name__ == "__main__":
    main()
