"""The event stream's own room: what an event is, how events fold into jobs and partitions,
the summaries computed from them, how a session file is written and read, and the tap that
carries one engine subscription to every sink.

    schema    kinds, fields, stage names, kernel groups, constructors, validation
    fold      events -> partition and job records (the one fold; the console and the summaries
              both read it)
    summary   tables and run figures computed from the events only
    recorder  session files written line by line, so a killed run leaves a readable prefix
    reader    session files read back, with one-line errors and crash-tolerant ends
    tap       one drain thread from a subscription into any number of sinks, each with its
              own thread, so a slow sink never holds up the engine or the recorder
"""
