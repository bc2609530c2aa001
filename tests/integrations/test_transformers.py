"""A real Transformers Trainer (a tiny GPT-2 built from a config, nothing
downloaded) with evaluation, logging through CurvestreamCallback into real
Mosquitto and a bridge on DuckDB."""

from __future__ import annotations

import torch
import transformers

from curvestream.transformers import CurvestreamCallback, rewrite_logs
from helpers import get_json, metric_counts, run_path, run_state
from servers import wait_until

STEPS = 8


class _Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(0, 64, (n, 16), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def test_tensorboard_key_rewrite_keeps_numbers_only():
    assert rewrite_logs({"loss": 1, "eval_loss": 0.5, "test_acc": 0.9, "note": "x", "flag": True}) == {
        "train/loss": 1.0, "eval/loss": 0.5, "test/acc": 0.9}


def test_a_trainer_with_evaluation_sends_train_and_eval_keys_config_and_final_status(
        mosquitto, bridge_factory, spool_dir, tmp_path):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    model = transformers.GPT2LMHeadModel(config)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=STEPS, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, logging_steps=2, eval_strategy="steps", eval_steps=4, save_strategy="no",
        report_to="none", use_cpu=True, disable_tqdm=True, learning_rate=1e-3, seed=0, run_name="gpt2-tiny")
    callback = CurvestreamCallback(project="hf", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                                   spool_dir=str(spool_dir))
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_Tokens(32), eval_dataset=_Tokens(8),
                                   callbacks=[callback])
    trainer.train()

    (identity,) = [r["run"] for r in get_json(bridge.url, "/api/v1/runs", project="hf")["runs"]
                   if r["name"] == "gpt2-tiny"]  # named by run_name, a new run with its own identity
    assert identity.startswith("gpt2-tiny-")
    wait_until(lambda: run_state(bridge.url, "hf", identity) == "finished", 60, "the run to finish")
    counts = metric_counts(bridge.url, "hf", identity)
    assert counts["train/loss"] == STEPS // 2
    assert counts["eval/loss"] == STEPS // 4
    assert "train/learning_rate" in counts and "train/train_runtime" in counts
    steps = get_json(bridge.url, run_path("hf", identity) + "/series", key="train/loss")["points"]["step"]
    assert steps == [2, 4, 6, 8]
    eval_steps = get_json(bridge.url, run_path("hf", identity) + "/series", key="eval/loss")["points"]["step"]
    assert eval_steps == [4, 8]
    (run,) = [r for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["run"] == identity]
    cfg = run["config"]
    assert (cfg["n_embd"], cfg["vocab_size"], cfg["model_type"]) == (16, 64, "gpt2")  # the model's config
    assert (cfg["max_steps"], cfg["learning_rate"], cfg["logging_steps"]) == (STEPS, 1e-3, 2)  # the arguments
    assert cfg["summary"]["global_step"] == STEPS and "eval/loss" in cfg["summary"]
