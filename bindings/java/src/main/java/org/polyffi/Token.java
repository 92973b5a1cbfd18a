package org.polyffi;

/** One generated token: its id in the model's vocabulary and its text. */
public record Token(int id, String text) {}
