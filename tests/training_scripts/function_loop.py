import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def fit(self, batches):
        for batch in batches:
            loss = self.model(batch).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        else:
            print("finished all batches")
        return self.model


def train():
    model = torch.nn.Linear(8, 1)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.01))
    return trainer.fit([torch.randn(4, 8) for _ in range(30)])


if __name__ == "__main__":
    train()
