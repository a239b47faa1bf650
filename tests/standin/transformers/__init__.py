"""A stand-in for transformers: the Trainer's loop as transformers 4.4x-5.x orders it."""

from transformers.trainer import Trainer as Trainer
from transformers.trainer import TrainerCallback as TrainerCallback
from transformers.trainer import TrainingArguments as TrainingArguments
