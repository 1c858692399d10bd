"""Thud as the AJFaraday/Thud king-of-the-hill engine plays it."""
