"""The pieces of the training-loop patch: `source` reads files as published, `find` finds the
step loop and its counter; `nsysgen.patching.patch` puts them together."""
