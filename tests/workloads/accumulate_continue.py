"""A training loop in one of the commonest shapes, for the step-window tests: gradient
accumulation by `continue`, and a counter incremented after the optimizer step and then logged
(the Hugging Face style). Run under the torch stand-in (tests/standin)."""

import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
accumulation = 4
global_step = 0
for micro_step, batch in enumerate(range(48)):
    loss = model(batch) / accumulation
    loss.backward()
    if (micro_step + 1) % accumulation != 0:
        continue
    optimizer.step()
    optimizer.zero_grad()
    global_step += 1
    print("@@ log", global_step)
