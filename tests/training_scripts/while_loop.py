"""A while loop with its own step counter, and an eval loop that must not be patched."""

import torch


def main(max_steps=50):
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optim = torch.optim.SGD(net.parameters(), lr=0.1)
    step = 0
    while step < max_steps:
        batch = torch.randn(32, 64)
        loss = net(batch).pow(2).mean()
        if torch.isnan(loss):
            step += 1
            continue
        optim.zero_grad()
        loss.backward()
        optim.step()
        step += 1
    with torch.no_grad():
        for _ in range(5):
            net(torch.randn(32, 64))


if __name__ == "__main__":
    main()
