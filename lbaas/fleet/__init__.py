"""The fleet of agent hosts: enrolment, the agent put together, and the controller's clients of it."""
