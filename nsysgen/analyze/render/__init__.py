"""Rendering: the summary to what people read: the console's lines, the CSV tables, the
pictures and the one HTML report. Reads the summary and what judge/ names; decides nothing."""
