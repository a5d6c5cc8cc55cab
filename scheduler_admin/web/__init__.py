"""The server-rendered console."""
