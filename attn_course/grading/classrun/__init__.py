"""The grading package's classrun layer."""
