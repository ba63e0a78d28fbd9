"""Task synthesis: tasks composed from a catalogue of operators, with the checks a synthesized task must pass."""
