"""Files copied into every generated folder and run where nsysgen is not installed: standard
library only, and nothing of nsysgen."""
