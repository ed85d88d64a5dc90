/* run.h — a public header of the fixture run room. */
