"""The tools of a search's steps: compile_and_profile and its verdict's text and facts, what a step records in the
store, the profile command, and the call's budget."""
