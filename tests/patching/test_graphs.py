"""An optimizer step captured into a CUDA graph is refused, with the reason: its replays run no
optimizer step the helper can see; a replay of a captured backward, or a compiled model, is not
refused (nsysgen/patching/graphs.py)."""

from __future__ import annotations

import pytest

from nsysgen.patching import step_loop as f
from nsysgen.patching.graphs import REFUSAL
from nsysgen.patching.patch import PatchError, analyse
from tests.patching.test_find_shapes import marked, numbering, script

# 8. CUDA graphs ------------------------------------------------------------------------------

WHOLE_NETWORK = script("""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        for i in range(3):
            model(static_input).sum().backward()
            optimizer.step()
    with torch.cuda.graph(g):
        model(static_input).sum().backward()
        optimizer.step()
    for data in loader:
        static_input.copy_(data)
        g.replay()
""")


def test_an_optimizer_step_in_a_graph_capture_is_refused() -> None:
    expected = REFUSAL.format(capture="with torch.cuda.graph(g):", line=6)
    for loop_line, step_expr in ((None, None), (3, None), (9, "i")):
        with pytest.raises(PatchError) as error:
            analyse(WHOLE_NETWORK, loop_line, step_expr)
        assert (str(error.value), error.value.setting) == (expected, None)


def test_an_optimizer_step_reached_through_a_function_in_a_capture_is_refused() -> None:
    source = script("""
        def train_step():
            model(static_input).sum().backward()
            optimizer.step()

        with torch.cuda.graphs.graph(g, pool=pool):
            train_step()
    """)
    with pytest.raises(PatchError, match="inside a CUDA graph capture"):
        analyse(source)


def test_a_raw_capture_is_refused_too() -> None:
    source = script("""
        g.capture_begin()
        model(static_input).sum().backward()
        optimizer.step()
        g.capture_end()
        for data in loader:
            g.replay()
    """)
    expected = REFUSAL.format(capture="g.capture_begin()", line=1)
    with pytest.raises(PatchError) as error:
        analyse(source)
    assert str(error.value) == expected


def test_a_graph_that_is_one_mode_of_the_script_leaves_the_eager_loop_to_the_compile() -> None:
    """`--graph` captures the whole step, else the loop steps eagerly (tests/workloads/
    gpu_train.py): the compile takes the loop, and the helper refuses the graph mode when it
    runs (it sees the capture: nsysgen/shipped/step_window/hooks.py)."""
    source = script("""
        def capture(model, optimizer):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                model(static_input).sum().backward()
                optimizer.step()
            return g

        graph = capture(model, optimizer) if args.graph else None
        for step in range(100):  # step loop
            if graph is not None:
                graph.replay()
            else:
                model(batch).sum().backward()
                optimizer.step()
    """)
    found = analyse(source)
    assert (found.node.lineno, found.step) == (marked(source), "step")
    # The same capture with only the replay in the loop: refused, as the whole network above.
    eager = "    else:\n        model(batch).sum().backward()\n        optimizer.step()\n"
    replay_only = source.replace(eager, "")
    assert replay_only != source
    with pytest.raises(PatchError, match="inside a CUDA graph capture"):
        analyse(replay_only)


@pytest.mark.parametrize(
    "source",
    [
        # The capture in the loop itself, on its first iteration.
        script("""
            for step in range(100):
                if step == 0:
                    with torch.cuda.graph(g):
                        model(x).sum().backward()
                        opt.step()
                else:
                    g.replay()
        """),
        # The same, through a function the loop calls.
        script("""
            def capture():
                with torch.cuda.graph(g):
                    model(x).sum().backward()
                    opt.step()

            for step in range(100):
                if step == 0:
                    capture()
                else:
                    g.replay()
        """),
        # Warm-up, capture and replays in one loop.
        script("""
            for step in range(100):
                if step < 3:
                    model(x).sum().backward()
                    opt.step()
                elif step == 3:
                    g.capture_begin()
                    model(x).sum().backward()
                    opt.step()
                    g.capture_end()
                else:
                    g.replay()
        """),
        # The whole network, with another object's replay() in the warm-up loop.
        WHOLE_NETWORK.replace("step()\nwith", "step()\n        buf.replay()\nwith", 1),
    ],
    ids=["captured-in-the-loop", "captured-by-a-called-function", "warm-up-capture-replay",
         "another-replay-in-the-warm-up"],
)  # fmt: skip
def test_a_graph_that_the_training_loop_itself_captures_stays_refused(source: str) -> None:
    with pytest.raises(PatchError, match="inside a CUDA graph capture"):
        analyse(source)


def test_an_eager_optimizer_step_after_a_replay_is_the_step() -> None:
    # Forward and backward captured, the optimizer stepped eagerly: the replay loop trains.
    source = WHOLE_NETWORK.replace("    optimizer.step()\nfor", "for")
    source = source.replace("    g.replay()\n", "    g.replay()\n    optimizer.step()\n")
    source = source.replace("for data in loader:", "for data in loader:  # step loop")
    found = analyse(source)
    assert found.node.lineno == marked(source)


def test_a_compiled_model_with_an_eager_optimizer_step_is_no_capture() -> None:
    source = script("""
        model = torch.compile(model, mode="reduce-overhead")
        for step in range(100):  # step loop
            loss = model(next(batches)).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """)
    assert numbering(analyse(source))[1:] == ("step", "step", "<module>", f.LOOP_VARIABLE)
