"""The consoles find a task pages: the top bars search and the histories it leads to."""
