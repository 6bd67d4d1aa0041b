"""The grading package's kernel layer."""
