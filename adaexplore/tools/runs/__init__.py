"""The tools of runs: listing and showing runs, their text, benches and the report's pages."""
