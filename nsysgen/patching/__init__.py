"""Training scripts: `source` reads files as published; `find` finds the step loop and how the
script numbers its steps, one module per job (`script` the calls, `loop` the loop, `accumulation`
where a step ends, `counter`, `reading` and `numbering` the step's number, `hints` what it says
when it cannot tell); `patch` writes the one-line patch."""
