"""The tools of the skill memory: reading and writing rules, the memory's files, and the rules shown to a step."""
