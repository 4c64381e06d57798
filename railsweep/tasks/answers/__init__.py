"""Reading an answer from a response and grading it: GSM8K, MATH and a task file's declared rules."""
