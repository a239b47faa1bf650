"""The step places a script's logs show, and the question asked where none is nsysgen's number
(nsysgen/patching/shown.py): an index within the epoch, a count of micro-batches, a logger's
own count, a number for several optimizer steps; and the logs that agree with nsysgen's number
(the same counter, its quotient, a metrics dict's entry, a number written into a file name)."""

from __future__ import annotations

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.patch import PatchError, analyse
from tests.patching.test_find_shapes import numbering, script


def asked(source: str) -> str:
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert error.value.setting == "step_expr"
    return str(error.value)


def test_a_progress_bar_of_the_epoch_asks() -> None:
    source = script("""
        def train(epoch, model, loader, optimizer):
            for batch_idx, (x, y) in enumerate(loader):
                model(x).sum().backward()
                optimizer.step()
                progress_bar(batch_idx, len(loader), "loss")

        for epoch in range(10):
            train(epoch, model, loader, optimizer)
    """)
    assert asked(source) == (
        "the script's log shows each step as `batch_idx` (line 5), which restarts every epoch; "
        "nsysgen would number steps by its own count of optimizer steps, so its step N would not "
        "be the step the log calls N; set step_expr to the number to count steps by (candidates: "
        "`epoch * len(loader) + batch_idx` (where epoch counts from 0))"
    )


def test_a_console_line_written_by_hand_asks() -> None:
    source = script("""
        for epoch in range(3):
            for batch_idx, (x, y) in enumerate(loader):
                model(x).sum().backward()
                optimizer.step()
                sys.stdout.write("| Epoch [%3d/%3d] Iter[%3d/%3d]" % (epoch, 3, batch_idx + 1, n))
    """)
    assert "shows each step as `batch_idx + 1` (line 5), which restarts every epoch;" in (
        asked(source)
    )


def test_a_logger_the_loop_iterates_asks_even_where_the_index_is_made_global() -> None:
    source = script("""
        def train_one_epoch(model, loader, optimizer, epoch):
            for it, batch in enumerate(metric_logger.log_every(loader, 10, "Epoch")):
                it = len(loader) * epoch + it
                model(batch).sum().backward()
                optimizer.step()
    """)
    assert asked(source).startswith(
        "the script's log shows each step as the index its logger counts (line 2), which counts "
        "the loader's batches from 0 on every pass over it; nsysgen would number steps by `it`,"
    )


def test_a_logged_count_of_micro_batches_asks_and_its_quotient_agrees() -> None:
    source = script("""
        train_step = 0
        for epoch in range(3):
            for batch in loader:
                model(batch).sum().backward()
                train_step += 1
                if train_step % accumulation == 0:
                    optimizer.step()
                    print(f"step {train_step}")
    """)
    question = asked(source)
    assert "shows each step as `train_step` (line 8), which counts micro-batches (train_step " in (
        question
    )
    assert question.endswith(
        "(candidates: `train_step // accumulation` (read while the optimizer steps))"
    )
    updates = source.replace(
        'print(f"step {train_step}")', 'updates += 1\n            print(f"step {updates}")'
    )
    found = analyse(updates.replace("train_step = 0", "train_step = updates = 0"))
    assert numbering(found)[4].startswith(f.COUNTER)
    engine = script("""
        global_step = 0
        for batch in loader:
            model(batch).sum().backward()
            optimizer.step()
            global_step += 1
            print("At step {}".format(global_step * args.accumulation))
    """)
    assert numbering(analyse(engine))[1:3] == ("global_step", "global_step")


def test_one_number_for_the_several_updates_of_an_iteration_asks() -> None:
    source = script("""
        global_step = 0
        for iteration in range(100):
            for step in range(128):
                global_step += 8
                rollout()
            for epoch in range(4):
                for start in range(0, 1024, 256):
                    loss().backward()
                    optimizer.step()
            writer.add_scalar("losses/value_loss", v_loss, global_step)
    """)
    assert "shows each step as `global_step` (line 10), which numbers the iterations of the " in (
        asked(source)
    )


def test_logs_that_show_nsysgens_number_ask_nothing() -> None:
    # A metrics dict's "step" shown beside a micro-batch count: the dict's entry is the number.
    metrics = script("""
        state = {"iter_num": 0, "step_count": 0}
        for batch in loader:
            model(batch).sum().backward()
            state["iter_num"] += 1
            if state["iter_num"] % 4 == 0:
                optimizer.step()
                state["step_count"] += 1
                metrics = {"iter": state["iter_num"], "step": state["step_count"]}
                fabric.print(f"iter {metrics['iter']} step {metrics['step']}")
                fabric.log_dict(metrics, step=state["iter_num"] - 1)
    """)
    assert numbering(analyse(metrics))[2] == 'state["step_count"] + 1'
    # A number the script computes and saves by (a checkpoint's name), beside the epoch's index.
    saved = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                done = epoch * len(loader) + i
                print("[Batch %d/%d]" % (i, len(loader)))
                save_image(batch, "images/%d.png" % done)
    """)
    assert numbering(analyse(saved))[2::2] == ("epoch * len(loader) + i", f.COMPUTED)
    unsaved = saved.replace('save_image(batch, "images/%d.png" % done)', "scheduler.step(done)")
    assert "shows each step as `i` (line 6), which restarts every epoch;" in asked(unsaved)
    # Another number that counts steps too: numbering chose between them already.
    engine = script("""
        for step in range(1, 100):
            loss = engine.train_batch(data_iter=loader)
            logger.info(f"Step={step:>6}, loss={loss.item():.4f}")
    """)
    assert numbering(analyse(engine))[2] == "engine.global_steps + 1"


def test_a_given_step_expr_is_not_questioned() -> None:
    source = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                print(f"[{i}/{len(loader)}]")
    """)
    asked(source)
    assert numbering(analyse(source, None, "epoch * len(loader) + i"))[4] == "step_expr"


def test_a_count_of_correct_answers_among_a_total_is_no_step_place() -> None:
    source = script("""
        for epoch in range(3):
            for i, (x, y) in enumerate(loader):
                out = model(x)
                out.sum().backward()
                optimizer.step()
                correct += out.argmax(1).eq(y).sum().item()
                total += y.size(0)
                print("Acc: %.3f%% (%d/%d)" % (100.0 * correct / total, correct, total))
    """)
    assert numbering(analyse(source))[1:3] == (None, None)


def test_what_a_review_found() -> None:
    # A shown value written over two lines, or with a comment in it, is read as one expression.
    split = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                logger.info("Epoch [%d/%d] Step [%d/%d]" % (epoch + 1, 3, i  # the place
                            + 1, len(loader)))
    """)
    assert "shows each step as `i + 1` (line 5), which restarts every epoch;" in asked(split)
    # nsysgen's counter in a log line without a step label agrees with the log.
    counter = script("""
        global_step = 0
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                global_step += 1
                print("Epoch {} [{}/{}] global {}".format(epoch, i, len(loader), global_step))
    """)
    assert numbering(analyse(counter))[2] == "global_step + 1"
    # A number across epochs, shown as a place among all steps, does not restart: it numbers.
    across = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                print(f"iter [{epoch * len(loader) + i + 1}/{total}]")
    """)
    assert numbering(analyse(across))[2] == "epoch * len(loader) + i + 1"
    # Named fields and unpacked arguments are no place.
    named = script("""
        for epoch in range(3):
            for i, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                print("%(i)d/%(n)d" % {"i": i, "n": len(loader)})
                print("[{}/{}]".format(*place))
    """)
    assert numbering(analyse(named))[1:3] == (None, None)
