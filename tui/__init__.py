"""The command line and the terminal app. Importing this package loads no textual."""
