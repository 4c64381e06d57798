"""The task kinds railsweep runs itself: coded GSM8K and MATH, and the task a task file declares."""
