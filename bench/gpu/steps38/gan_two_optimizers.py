"""A tiny DCGAN-style loop on random 16x16 images: each iteration steps the discriminator's Adam,
then the generator's; the counter `iters` is printed, then incremented at the iteration's end;
40 iterations (steps38 proof, window 10..14; compiled without workload.python.source: nsysgen
must learn at run time that two optimizer steps make one training step).

The evidence (proof.py): a mark before each of the two optimizer steps, keyed `<iters>D` and
`<iters>G`, both paired with the `iters` the iteration prints.
"""

from __future__ import annotations

import proof
import torch
from torch import nn

NZ, BATCH, EPOCHS, BATCHES = 16, 16, 2, 20


def generator() -> nn.Module:
    return nn.Sequential(
        nn.ConvTranspose2d(NZ, 32, 4, 1, 0, bias=False),  # 4x4
        nn.BatchNorm2d(32),
        nn.ReLU(True),
        nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False),  # 8x8
        nn.BatchNorm2d(16),
        nn.ReLU(True),
        nn.ConvTranspose2d(16, 1, 4, 2, 1, bias=False),  # 16x16
        nn.Tanh(),
    )


def discriminator() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 4, 2, 1, bias=False),  # 8x8
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(16, 32, 4, 2, 1, bias=False),  # 4x4
        nn.BatchNorm2d(32),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(32, 1, 4, 1, 0, bias=False),  # 1x1
        nn.Sigmoid(),
    )


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.rand(BATCH * BATCHES, 1, 16, 16) * 2 - 1
    dataloader = torch.utils.data.DataLoader(images, batch_size=BATCH, shuffle=True)
    net_g, net_d = generator().to(device), discriminator().to(device)
    criterion = nn.BCELoss()
    optimizer_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    iters = 0
    for epoch in range(EPOCHS):
        for i, data in enumerate(dataloader):
            real = data.to(device)
            size = real.size(0)
            net_d.zero_grad()
            label = torch.full((size,), 1.0, device=device)
            err_d_real = criterion(net_d(real).view(-1), label)
            err_d_real.backward()
            noise = torch.randn(size, NZ, 1, 1, device=device)
            fake = net_g(noise)
            label.fill_(0.0)
            err_d_fake = criterion(net_d(fake.detach()).view(-1), label)
            err_d_fake.backward()
            proof.mark(f"{iters}D")
            optimizer_d.step()
            net_g.zero_grad()
            label.fill_(1.0)
            err_g = criterion(net_d(fake).view(-1), label)
            err_g.backward()
            proof.mark(f"{iters}G")
            optimizer_g.step()
            print(
                f"iter {iters} [{epoch}/{EPOCHS}][{i}/{len(dataloader)}] "
                f"loss_d {(err_d_real + err_d_fake).item():.4f} loss_g {err_g.item():.4f}"
            )
            proof.log(f"{iters}D", iters, "printed iter")
            proof.log(f"{iters}G", iters, "printed iter")
            iters += 1
    print("gan_two_optimizers: done, iters", iters)


if __name__ == "__main__":
    main()
