"""The grading package's checking layer."""
