"""The verbs' work, above the targets: compiling a setup or a sweep into its folder (pipeline,
build), proving committed output current (check, check_shared, regenerate), and saying what a
setup will do (show, plan_report). The face (nsysgen/cli/) parses a command and calls them."""
