"""HTML / SVG / JSON from analysis results: highlighting, diffs, graphs, the report."""
