import time

import torch

model = torch.nn.Linear(256, 10).cuda()
optimizer = torch.optim.Adam(model.parameters())
x = torch.randn(128, 256, device="cuda")
y = torch.randint(0, 10, (128,), device="cuda")

for step in range(80):
    start = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0:
        print(step, loss.item(), time.perf_counter() - start)
