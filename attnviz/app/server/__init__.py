"""The server's machinery: visitors and their budgets, page turns, sessions, the shared models,
the background jobs (corpus runs, trainings) and the guard on what a client sends."""
